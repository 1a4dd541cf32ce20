//go:build linux && !mips && !mipsle && !mips64 && !mips64le

package sock

// soReusePort is SO_REUSEPORT (asm-generic/socket.h), which package
// syscall does not define on every architecture (amd64, 386, arm).
const soReusePort = 0xf
