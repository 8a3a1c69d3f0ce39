package secret

import (
	"os"
	"regexp"
	"strings"
	"unsafe"
)

// MaskArgv hides the secrets Mask recognises in this process's command
// line as the kernel shows it (/proc/PID/cmdline, ps), and registers the
// URL passwords it found. os.Args keeps the real values: it is given
// fresh copies first. Call it at the start of main, before anything reads
// os.Args by reference.
func MaskArgv() {
	orig := os.Args
	fresh := make([]string, len(orig))
	for i, a := range orig {
		fresh[i] = strings.Clone(a)
	}
	os.Args = fresh
	for i, a := range fresh {
		if _, pw := Split(a); pw != "" {
			Register(pw)
		}
		if m := Mask(a); m != a {
			overwrite(orig[i], maskedFit(a, m))
		}
	}
}

// maskedFit returns masked if it fits in len(arg) bytes, else arg with
// every byte of its URL passwords replaced by 'x' (a password shorter than
// Masked keeps its length).
func maskedFit(arg, masked string) string {
	if len(masked) <= len(arg) {
		return masked
	}
	b := []byte(arg)
	for _, re := range []*regexp.Regexp{userinfoPassword, queryPassword} {
		for _, m := range re.FindAllStringSubmatchIndex(arg, -1) {
			for i := m[4]; i < m[5]; i++ {
				b[i] = 'x'
			}
		}
	}
	return string(b)
}

// overwrite writes m over the bytes of s, padding with NULs. s must be a
// string whose memory is writable: on Linux, an original os.Args element,
// which points into the argument area of the process's stack.
func overwrite(s, m string) {
	if len(s) == 0 {
		return
	}
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	n := copy(b, m)
	for i := n; i < len(b); i++ {
		b[i] = 0
	}
}
