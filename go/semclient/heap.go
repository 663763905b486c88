// SPDX-License-Identifier: BSD-2-Clause

package semclient

/*
#include "shim.h"
*/
import "C"

// heapInUse is the C heap in use (glibc's mallinfo2), which the tests
// compare around a loop.
func heapInUse() uint64 { return uint64(C.gsc_heap_in_use()) }
