// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The search-tree helpers that elfutils 0.192's libelf.a calls but does not
 * contain: they live in elfutils' internal libeu, which is not installed, so a
 * fully static link against Debian 13's libelf.a fails with "undefined
 * reference to eu_search_tree_init" (elfutils bug 32293, fixed in 0.193). The
 * Makefile links this file into the static binaries only when libelf.a needs
 * it. The functions are elfutils' own, for a libelf built without thread
 * safety (Debian's: libelf.a calls no pthread_rwlock function), where the
 * tree's lock does nothing: they touch only the tree's first member, its root.
 */
#include <search.h>
#include <stddef.h>

struct eu_search_tree {
	void *root; /* elfutils' search_tree starts with it; its unused lock follows */
};

void *eu_tsearch(const void *key, struct eu_search_tree *tree, int (*compare)(const void *, const void *));
void *eu_tfind(const void *key, struct eu_search_tree *tree, int (*compare)(const void *, const void *));
void *eu_tdelete(const void *key, struct eu_search_tree *tree, int (*compare)(const void *, const void *));
void eu_tdestroy(struct eu_search_tree *tree, void (*free_node)(void *));
void eu_search_tree_init(struct eu_search_tree *tree);
void eu_search_tree_fini(struct eu_search_tree *tree, void (*free_node)(void *));

void *eu_tsearch(const void *key, struct eu_search_tree *tree, int (*compare)(const void *, const void *))
{
	return tsearch(key, &tree->root, compare);
}

void *eu_tfind(const void *key, struct eu_search_tree *tree, int (*compare)(const void *, const void *))
{
	return tfind(key, &tree->root, compare);
}

void *eu_tdelete(const void *key, struct eu_search_tree *tree, int (*compare)(const void *, const void *))
{
	return tdelete(key, &tree->root, compare);
}

void eu_tdestroy(struct eu_search_tree *tree, void (*free_node)(void *))
{
	tdestroy(tree->root, free_node);
	tree->root = NULL;
}

void eu_search_tree_init(struct eu_search_tree *tree)
{
	tree->root = NULL;
}

void eu_search_tree_fini(struct eu_search_tree *tree, void (*free_node)(void *))
{
	eu_tdestroy(tree, free_node);
}
