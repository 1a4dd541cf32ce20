package requester

// Kind is the kind of an RDMA operation.
type Kind uint8

// The operations a Requester posts, one RoCEv2 RC request each.
const (
	// Write places Data at Offset (RDMA WRITE; FIRST/MIDDLE/LAST packets
	// above the path MTU).
	Write Kind = iota + 1
	// WriteImm is Write and then delivers Imm to the responder's
	// notification channel (RDMA WRITE with immediate).
	WriteImm
	// FetchAdd adds Add to the 8-byte word at Offset, which must be 8-byte
	// aligned, and returns the word's original value in a Completion.
	FetchAdd
	// CompareSwap replaces the 8-byte word at Offset (8-byte aligned) by
	// Swap if it equals Compare, and returns the word's original value in
	// a Completion: the swap happened iff it equals Compare.
	CompareSwap
	// Read reads len(Dst) bytes at Offset into Dst (RDMA READ; the
	// responder answers with READ Response packets segmented at the path
	// MTU) and reports it in a Completion. A READ is not a snapshot: bytes
	// written while it runs may or may not be seen, as with a NIC.
	Read
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case Write:
		return "write"
	case WriteImm:
		return "write-imm"
	case FetchAdd:
		return "fetch-add"
	case CompareSwap:
		return "compare-swap"
	case Read:
		return "read"
	}
	return "invalid"
}

// Op is one RDMA operation against one target (a memory region the
// collector advertised, installed with SetTargets). Words are 8-byte
// little-endian, the host order of the responders DTA runs on (as rxe
// does).
type Op struct {
	Kind    Kind
	Target  uint16 // index into the targets given to SetTargets
	Offset  uint64 // byte offset inside the target
	Data    []byte // Write, WriteImm: the bytes to place; copied by Post
	Imm     uint32 // WriteImm: the immediate value
	Add     uint64 // FetchAdd: the addend
	Compare uint64 // CompareSwap: the value the word must hold
	Swap    uint64 // CompareSwap: the value written if it does
	// Dst, for a Read, receives the bytes; its length is the READ's
	// length (at most 2^31, and at most Config.Window times the path MTU).
	// Post keeps it: the requester writes into it until the READ's
	// Completion, and the caller must not touch it before.
	Dst []byte
	// ID is handed back in the Completion of a FetchAdd, CompareSwap or
	// Read (a verbs work request ID); the requester does not interpret it.
	ID uint64

	done chan<- ReadCompletion // Read: where Requester.Read waits, instead of OnRead
}

// Len is the number of bytes of the target the op touches.
func (o *Op) Len() uint64 {
	if o.Kind == FetchAdd || o.Kind == CompareSwap {
		return 8
	}
	if o.Kind == Read {
		return uint64(len(o.Dst))
	}
	return uint64(len(o.Data))
}

func (o *Op) atomic() bool { return o.Kind == FetchAdd || o.Kind == CompareSwap }

// readPackets returns the READ Response packets, and so the PSNs, a READ
// of n bytes takes at path MTU pmtu: ceil(n/pmtu), 1 for n = 0.
func readPackets(n, pmtu int) int { return max(1, (n+pmtu-1)/pmtu) }

// Completion is the outcome of one atomic (FetchAdd, CompareSwap), passed
// to the function set with OnAtomic. Each atomic completes exactly once.
type Completion struct {
	ID   uint64 // the op's ID
	Kind Kind   // FetchAdd or CompareSwap
	// Orig is the word's value before the op, when Err is nil. For a
	// CompareSwap the swap happened iff Orig equals the op's Compare.
	Orig uint64
	// Err is nil when the responder executed the op and returned Orig;
	// ErrRefused when it refused it with a NAK (nothing changed); or
	// ErrNotConnected when the connection went down first (it may or may
	// not have executed; after Config.Retries ACK timeouts in a row the
	// error also matches ErrTimeout).
	Err error
}

// ReadCompletion is the outcome of one Read, passed to the function set
// with OnRead. Each Read completes exactly once.
type ReadCompletion struct {
	ID uint64 // the op's ID
	// Data is the op's Dst, filled with the bytes read, when Err is nil.
	Data []byte
	// Err is nil when Data holds the bytes; ErrRefused when the responder
	// refused the READ with a NAK (no read right, wrong R_Key, outside the
	// region: Dst holds nothing useful); or ErrNotConnected when the
	// connection went down first (after Config.Retries ACK timeouts in a
	// row it also matches ErrTimeout).
	Err error
}
