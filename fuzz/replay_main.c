/* Standalone replay for libFuzzer targets: runs LLVMFuzzerTestOneInput over
 * every file given (directories are walked one level deep), so corpora run as
 * ordinary tests under gcc, ASan or valgrind without libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional, as in libFuzzer: called once with argc/argv before any input. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "replay: cannot open %s\n", path);
		return -1;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	if (buf == NULL) {
		fclose(f);
		return -1;
	}
	for (;;) {
		if (len == cap) {
			uint8_t *grown = realloc(buf, cap * 2);
			if (grown == NULL) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = grown;
			cap *= 2;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		if (n == 0)
			break;
		len += n;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

static int replay_path(const char *path, size_t *count)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		fprintf(stderr, "replay: cannot stat %s\n", path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return replay_file(path);
	}
	DIR *dir = opendir(path);
	if (dir == NULL) {
		fprintf(stderr, "replay: cannot open directory %s\n", path);
		return -1;
	}
	int rc = 0;
	struct dirent *ent;
	while ((ent = readdir(dir)) != NULL) {
		if (ent->d_name[0] == '.')
			continue;
		char child[4096];
		int n = snprintf(child, sizeof child, "%s/%s", path, ent->d_name);
		if (n < 0 || (size_t)n >= sizeof child)
			continue;
		struct stat cst;
		if (stat(child, &cst) != 0 || !S_ISREG(cst.st_mode))
			continue;
		(*count)++;
		if (replay_file(child) != 0)
			rc = -1;
	}
	closedir(dir);
	return rc;
}

int main(int argc, char **argv)
{
	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
		return 2;
	}
	size_t count = 0;
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		if (replay_path(argv[i], &count) != 0)
			rc = 1;
	}
	if (count == 0) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	printf("replayed %zu inputs\n", count);
	return rc;
}
