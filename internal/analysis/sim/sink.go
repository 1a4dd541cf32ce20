package sim

import (
	"encoding/binary"
	"fmt"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/region"
)

// regionSink is the simulation's memop.Sink: it applies writes to one region.
// It is a stand-in for the collector's local sink without the store
// catalogue: every op goes to the run's one store.
type regionSink struct {
	mem *region.Region
	// ifEmpty applies ops after the first of each Apply call only into an
	// empty slot: the DART compare-and-swap variant. The simulation calls
	// Apply once per report, and keywrite.Spec.Translate emits the copies in
	// order, so ops[j] is copy j.
	ifEmpty bool
	skipped uint64 // copies not written because the slot was taken (ifEmpty)
}

func (s *regionSink) Apply(ops []memop.Op) error {
	for j := range ops {
		op := &ops[j]
		switch op.Kind {
		case memop.Write, memop.WriteImm:
		default:
			return fmt.Errorf("sim: unexpected %v op", op.Kind)
		}
		if !s.ifEmpty || j == 0 {
			if err := s.mem.Write(op.Offset, op.Data); err != nil {
				return err
			}
			continue
		}
		// Compare-and-swap 0 → the slot's first word; the rest of the slot
		// follows only if the swap won. A slot is empty iff its first word
		// (checksum and the value's head) is zero.
		swapped, _, err := s.mem.CompareAndSwap64(op.Offset, 0, binary.LittleEndian.Uint64(op.Data))
		if err != nil {
			return err
		}
		if !swapped {
			s.skipped++
			continue
		}
		if err := s.mem.Write(op.Offset+8, op.Data[8:]); err != nil {
			return err
		}
	}
	return nil
}

// collectSink is the memop.Sink a Postcarding producer gives the cache: it
// copies the ops into a block's batch, to be applied later in stream order.
type collectSink struct{ b *memop.Batch }

func (s *collectSink) Apply(ops []memop.Op) error {
	for j := range ops {
		op := &ops[j]
		if op.Kind != memop.Write {
			return fmt.Errorf("sim: unexpected %v op", op.Kind)
		}
		data := s.b.Alloc(len(op.Data))
		copy(data, op.Data)
		s.b.Write(op.Store, op.Offset, data)
	}
	return nil
}
