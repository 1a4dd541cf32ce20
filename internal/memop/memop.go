// Package memop defines the memory operation, the only thing that crosses from
// translation (the writer side of a primitive) to a sink (local memory, RoCEv2,
// or a real RNIC).
//
// An Op names a store by its index in the translator's store table and an offset
// inside that store's region; it never carries a virtual address or a key. Sinks
// map (store, offset) to wherever the store lives. This package holds no logic
// beyond the type: it must not import sockets, regions or primitives.
package memop

// Kind is the kind of a memory operation.
type Kind uint8

// The memory operations a translation can emit. They map one to one onto RDMA
// verbs: WRITE, WRITE with immediate, and FETCH_ADD.
const (
	// Write copies Data to Offset.
	Write Kind = iota + 1
	// WriteImm copies Data to Offset and then delivers Imm to the collector's
	// notification channel (RDMA WRITE with immediate).
	WriteImm
	// FetchAdd adds Delta to the 8-byte little-endian word at Offset, which
	// must be 8-byte aligned.
	FetchAdd
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
	}
	return "invalid"
}

// Op is one memory operation against one store.
//
// Data aliases memory owned by whoever produced the Op (usually a translation
// worker's scratch buffer); it is valid only until that producer translates the
// next report. Sinks that keep ops past Apply must copy Data.
type Op struct {
	Kind   Kind
	Store  uint16 // index of the store in the translator's store table
	Offset uint64 // byte offset inside the store's region
	Data   []byte // Write, WriteImm: the bytes to place
	Delta  uint64 // FetchAdd: the addend
	Imm    uint32 // WriteImm: the immediate value
}

// Len is the number of bytes of the store the op touches.
func (o *Op) Len() uint64 {
	if o.Kind == FetchAdd {
		return 8
	}
	return uint64(len(o.Data))
}

// Sink applies memory operations to wherever the stores live: the collector's
// regions in this process, or a remote collector over RoCEv2. Apply returns
// after the ops are applied or queued in order; ops of one Apply call are
// applied in order, and ops of successive calls from one goroutine too.
type Sink interface {
	Apply(ops []Op) error
}

// A Deferrer is a sink that sends its ops over a network (the RoCEv2
// requester) and can hold the ops of several Apply calls back to send them in
// one burst: ApplyDeferred checks and queues ops exactly as Apply does, in the
// same order with every other call, but may leave them unsent until Push (or,
// as a safety net, until the sink's own timer, within milliseconds). A
// translator worker applies a datagram's reports with ApplyDeferred and
// pushes once at the end of the datagram, so that the per-send cost (one
// system call) is paid per datagram, not per Apply.
type Deferrer interface {
	Sink
	ApplyDeferred(ops []Op) error
	Push()
}

// Batch collects the ops of one translation together with the bytes they
// point to. Reset it before each report; after warm-up it allocates nothing.
type Batch struct {
	Ops   []Op
	arena []byte
}

// NewBatch returns a Batch with room for ops operations and arena payload
// bytes before it has to grow.
func NewBatch(ops, arena int) *Batch {
	return &Batch{Ops: make([]Op, 0, ops), arena: make([]byte, 0, arena)}
}

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() {
	b.Ops = b.Ops[:0]
	b.arena = b.arena[:0]
}

// Alloc returns n zeroed bytes owned by the batch, valid until Reset.
func (b *Batch) Alloc(n int) []byte {
	if len(b.arena)+n > cap(b.arena) {
		// Earlier slices keep pointing at the old array, which stays valid.
		b.arena = make([]byte, 0, max(2*cap(b.arena), n, 4096))
	}
	s := b.arena[len(b.arena) : len(b.arena)+n : len(b.arena)+n]
	clear(s)
	b.arena = b.arena[:len(b.arena)+n]
	return s
}

// next extends Ops by one and returns it. The methods below fill it field by
// field: appending an Op literal builds it on the stack and copies it, and the
// copy stalls on store forwarding (about three times the cost per op on the
// report path).
func (b *Batch) next() *Op {
	n := len(b.Ops)
	if n == cap(b.Ops) {
		b.Ops = append(b.Ops, Op{})
	}
	b.Ops = b.Ops[:n+1]
	return &b.Ops[n]
}

// Write appends a Write op.
func (b *Batch) Write(store uint16, off uint64, data []byte) {
	op := b.next()
	op.Kind, op.Store, op.Offset, op.Data, op.Delta, op.Imm = Write, store, off, data, 0, 0
}

// WriteImm appends a WriteImm op.
func (b *Batch) WriteImm(store uint16, off uint64, data []byte, imm uint32) {
	op := b.next()
	op.Kind, op.Store, op.Offset, op.Data, op.Delta, op.Imm = WriteImm, store, off, data, 0, imm
}

// FetchAdd appends a FetchAdd op.
func (b *Batch) FetchAdd(store uint16, off uint64, delta uint64) {
	op := b.next()
	op.Kind, op.Store, op.Offset, op.Data, op.Delta, op.Imm = FetchAdd, store, off, nil, delta, 0
}
