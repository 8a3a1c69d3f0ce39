package cli

import (
	"net"
	"os"
)

// notifyReady tells systemd that the mount serves (sd_notify "READY=1"),
// when it runs as a Type=notify service: systemd names its socket in
// NOTIFY_SOCKET ('@' for the abstract namespace). Elsewhere it does
// nothing. Failures are ignored: the mount serves either way.
func notifyReady() {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return
	}
	if path[0] == '@' {
		path = "\x00" + path[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("READY=1"))
}
