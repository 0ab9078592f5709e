# dev/data/data.mk — build rules for the data tools, included by the top-level Makefile.
DATA_PROGRAMS := dev/data/tokenizer
DATA_TEST_COMMANDS := ./dev/data/test_tokenizer.sh
DATA_CLEAN := dev/data/tokenizer

dev/data/tokenizer: dev/data/tokenizer.c $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)
