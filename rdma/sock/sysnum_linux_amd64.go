package sock

// The standard library's syscall package predates sendmmsg on amd64.
const (
	sysRecvmmsg = 299
	sysSendmmsg = 307
)
