// Package tun opens Linux TUN devices for the network functions of
// internal/tea/nf: each Read returns one IP packet the kernel routed to the
// device, each Write injects one as if it arrived on it. It also moves the
// calling goroutine into a network namespace (InNetns), for tests and
// tools that put devices and sockets into namespaces made with ip netns.
//
// It sets no addresses or routes (ip(8) does); Open brings the device up.
package tun

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Open creates (or attaches to a persistent, made with ip tuntap add) TUN
// device name in the calling thread's network namespace, without packet
// information headers, brings it up, and returns it as a file whose reads
// unblock on Close.
func Open(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tun %q: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tun %q: TUNSETIFF: %w", name, err)
	}
	if err := up(name); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tun %q: %w", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// up sets IFF_UP on the device name.
func up(name string) error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS: %w", err)
	}
	return nil
}

// InNetns runs f on a thread in the network namespace of the named ns (ip
// netns add NAME: /run/netns/NAME). The thread is discarded afterwards, so
// the namespace never leaks to other goroutines; file descriptors f opens
// (sockets, TUN devices) stay in the namespace and may be used anywhere.
func InNetns(name string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		fd, err := unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("netns %q: %w", name, err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netns %q: setns: %w", name, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}
