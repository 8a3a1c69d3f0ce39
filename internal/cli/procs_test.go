package cli

import (
	"runtime"
	"testing"
)

func TestRaiseProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	t.Setenv("GOMAXPROCS", "")
	runtime.GOMAXPROCS(1)
	raiseProcs()
	if got := runtime.GOMAXPROCS(0); got != minProcs {
		t.Errorf("GOMAXPROCS unset: %d Ps, want %d", got, minProcs)
	}
	runtime.GOMAXPROCS(minProcs + 4)
	raiseProcs()
	if got := runtime.GOMAXPROCS(0); got != minProcs+4 {
		t.Errorf("more Ps than minProcs: lowered to %d", got)
	}
	t.Setenv("GOMAXPROCS", "1")
	runtime.GOMAXPROCS(1)
	raiseProcs()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS=1 set by the user: %d Ps", got)
	}
}
