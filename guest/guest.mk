# Guest-side programs (static x86-64 binaries). Owned by guest/.
.PHONY: guest
guest:
