// Package service tests Shoal run as a system service, through the real
// binary and the system's own tools: 'shoal install' into a temporary
// prefix (its mount(8) helpers into the real /sbin, removed afterwards),
// 'mount -t shoal' and a temporary fstab through mount(8), umount(8), and
// the systemd unit in contrib/systemd (checked with systemd-analyze).
package service
