package sock

// The standard library's syscall package predates sendmmsg on 386.
const (
	sysRecvmmsg = 337
	sysSendmmsg = 345
)
