// SPDX-License-Identifier: BSD-2-Clause

package semclient

// CHeapInUse is the C heap in use (glibc mallinfo2), for the leak test.
func CHeapInUse() uint64 { return heapInUse() }
