// Parses a Chrome trace event JSON file with Chrome DevTools' trace engine
// (@paulirish/trace_engine, the parser behind DevTools' Performance panel) and
// prints what it understood as one JSON object: process and thread names, and
// per thread every slice with its start, duration, parent slice and args.
// usage: node check_chrome.mjs ENGINE_DIR TRACE.json
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

// Node 18 (Debian 12's) lacks URL.parse (Node 22), which the engine calls on the
// page URL of browser traces: the standard's behaviour, for that one call.
if (typeof URL.parse !== 'function') {
  URL.parse = (url, base) => {
    try {
      return new URL(url, base);
    } catch {
      return null;
    }
  };
}

const [engineDir, tracePath] = process.argv.slice(2);
const Trace = await import(pathToFileURL(
    path.join(engineDir, 'node_modules/@paulirish/trace_engine/models/trace/trace.js')).href);

const json = JSON.parse(fs.readFileSync(tracePath, 'utf8'));
const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(json.traceEvents);
const data = model.parsedTrace().data;

const out = {threads: [], processNames: {}, warnings: Object.keys(data.Warnings.perWarning ?? {}),
             metadata: json.metadata};
for (const [pid, names] of data.Meta.processNames ?? [])
  out.processNames[pid] = names.args?.name ?? null;
for (const [pid, proc] of data.Renderer.processes) {
  for (const [tid, thread] of proc.threads) {
    const entries = thread.entries.map(e => {
      const node = data.Renderer.entryToNode.get(e);
      return {name: e.name, ts: e.ts, dur: e.dur, parent: node?.parent?.entry?.name ?? null,
              args: e.args ?? null};
    });
    out.threads.push({pid, tid, name: thread.name, entries});
  }
}
process.stdout.write(JSON.stringify(out));
