//go:build !linux

package tun

import (
	"errors"
	"os"
)

// errNotLinux is what Open and InNetns return off Linux: TUN devices and
// network namespaces as this package uses them are Linux's.
var errNotLinux = errors.New("tun: TUN devices and network namespaces need Linux")

// Open fails off Linux.
func Open(name string) (*os.File, error) { return nil, errNotLinux }

// InNetns fails off Linux without running f.
func InNetns(name string, f func() error) error { return errNotLinux }
