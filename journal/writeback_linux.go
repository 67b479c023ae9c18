//go:build linux && (amd64 || arm64)

package journal

import (
	"os"
	"syscall"
)

// The flags of sync_file_range(2).
const (
	syncRangeWaitBefore = 1
	syncRangeWrite      = 2
	syncRangeWaitAfter  = 4
)

// startWriteback asks the kernel to start writing the file's dirty pages in [off, off+n)
// to the device, without waiting (sync_file_range with SYNC_FILE_RANGE_WRITE).
func startWriteback(f *os.File, off, n int64) {
	syncRange(f, off, n, syncRangeWrite)
}

// awaitWriteback waits until the file's pages in [off, off+n) have been written to the
// device, starting any not started yet.
func awaitWriteback(f *os.File, off, n int64) {
	syncRange(f, off, n, syncRangeWaitBefore|syncRangeWrite|syncRangeWaitAfter)
}

// syncRange is sync_file_range(2). It is only pacing, never durability (it neither
// flushes metadata nor the device's cache): the fsync that follows is what makes a file
// durable, and reports any write error, so an error here is ignored (a file system that
// does not support the call is written as before).
func syncRange(f *os.File, off, n int64, flags int) {
	_, _, _ = syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, f.Fd(), uintptr(off), uintptr(n), uintptr(flags), 0, 0)
}
