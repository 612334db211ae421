//go:build unix

package search

import "syscall"

// nonblock keeps an open of a FIFO swapped in after the walk from
// blocking.
const nonblock = syscall.O_NONBLOCK

// nofollow keeps an ignore file swapped for a symlink from being read.
const nofollow = syscall.O_NOFOLLOW
