# dev/data/data.mk — build rules for the data tools, included by the top-level Makefile.
DATA_PROGRAMS := dev/data/tokenizer
# the tokenizer with 4099-byte streamed blocks instead of 8 MiB ones: its tokens must be the same (a piece is encoded
# only once its block shows its end), which dev/data/test_prepare_dataset.sh checks on corpora of a few MB
DATA_TEST_PROGRAMS := dev/data/tokenizer_small_blocks
# longest first (the Makefile's test lists are in order of time taken)
DATA_TEST_COMMANDS := ./dev/data/test_prepare_dataset.sh ./dev/data/test_llmc_formats.sh ./dev/data/test_tokenizer.sh
DATA_CLEAN := dev/data/tokenizer dev/data/tokenizer_small_blocks

dev/data/tokenizer: dev/data/tokenizer.c llmc/checksum.h llmc/shard_manifest.h $(XXHASH_HEADER) $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

dev/data/tokenizer_small_blocks: dev/data/tokenizer.c llmc/checksum.h llmc/shard_manifest.h $(XXHASH_HEADER) $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) -DENCODE_BLOCK_BYTES=4099u $< -o $@ $(LDLIBS)
