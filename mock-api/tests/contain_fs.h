/* contain_fs: the containment battery's filesystem tests (contain_fs.c),
 * registered in test_contain.c's list. Needs <setjmp.h>, <stdarg.h>,
 * <stddef.h>, <stdint.h> and <cmocka.h> first (cmocka's rule). */
#ifndef SBX_MOCK_TEST_CONTAIN_FS_H
#define SBX_MOCK_TEST_CONTAIN_FS_H

void contain_fs_one_filesystem(void **state);
void contain_fs_root_is_private(void **state);
void contain_fs_host_never_writable(void **state);
void contain_fs_fork_copies_root(void **state);
void contain_fs_disk_bounded(void **state);

#endif
