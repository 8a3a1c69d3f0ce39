package secret

import "unsafe"

// unsafeString views b as a string, as the runtime views argv.
func unsafeString(b []byte) string { return unsafe.String(&b[0], len(b)) }
