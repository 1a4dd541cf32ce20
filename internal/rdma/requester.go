package rdma

import (
	"context"
	"log/slog"
	"sync"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/rdma/requester"
)

// Target is where a store lives in the collector's memory, as learned from
// its advertisement: ops for store index i go to targets[i]
// (requester.Target).
type Target = requester.Target

// Requester is the translator's RoCEv2 requester: the public
// requester.Requester (CM handshake, advertisement, PSNs, window,
// retransmission, atomics; see rdma/requester) as a [memop.Sink] and
// [memop.Deferrer], so that translation's ops go to a remote collector.
// Every method of requester.Requester is available on it. Create it with
// [Dial].
type Requester struct {
	*requester.Requester

	mu  sync.Mutex // guards ops; serialises Apply calls as Post would
	ops []requester.Op
}

var (
	_ memop.Sink     = (*Requester)(nil)
	_ memop.Deferrer = (*Requester)(nil)
)

// Dial connects to the responder at cfg.Collector (requester.Dial) and
// returns it as a memop sink. logger may be nil.
func Dial(ctx context.Context, cfg RequesterConfig, logger *slog.Logger) (*Requester, error) {
	q, err := requester.Dial(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
	return &Requester{Requester: q}, nil
}

// Apply sends ops in order (requester.Requester.Post): Write as RDMA WRITE
// (FIRST/MIDDLE/LAST above the path MTU), WriteImm as WRITE with
// immediate, FetchAdd as FETCH_ADD; Op.Store is the target index. It
// returns once they are sent, blocking while the window is full, with the
// errors Post returns (ErrUnknownTarget, ErrOutOfRange, ErrMisaligned,
// ErrBadOp, ErrNotConnected). It does not allocate once warm.
func (q *Requester) Apply(ops []memop.Op) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.Post(q.convert(ops))
}

// ApplyDeferred is Apply without the send at the end (memop.Deferrer,
// requester.Requester.PostDeferred); Push sends.
func (q *Requester) ApplyDeferred(ops []memop.Op) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.PostDeferred(q.convert(ops))
}

// convert maps ops onto the requester's ops in q.ops. Called with mu held.
// The previous call's Data references are overwritten, never kept beyond
// the next call.
func (q *Requester) convert(ops []memop.Op) []requester.Op {
	if cap(q.ops) < len(ops) {
		q.ops = make([]requester.Op, len(ops))
	}
	out := q.ops[:len(ops)]
	for i := range ops {
		op, o := &ops[i], &out[i]
		o.Target, o.Offset, o.Data, o.Imm, o.Add = op.Store, op.Offset, op.Data, op.Imm, op.Delta
		switch op.Kind {
		case memop.Write:
			o.Kind = requester.Write
		case memop.WriteImm:
			o.Kind = requester.WriteImm
		case memop.FetchAdd:
			o.Kind = requester.FetchAdd
		default:
			o.Kind = 0 // refused by Post: ErrBadOp
		}
	}
	return out
}
