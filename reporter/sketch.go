package reporter

import (
	"encoding/binary"
	"fmt"

	"github.com/dta-go/dta/sketch"
	"github.com/dta-go/dta/wire/dta"
)

// SketchRun is the most counters one Sketch-Merge report carries when
// flushing: 64 counters keep a report at 525 bytes, so that the Reporter's
// batches stay within one Ethernet frame (two reports).
const SketchRun = 64

// SendSketch flushes sk as epoch epoch of the Sketch-Merge store with id
// store (0: the translator's default Sketch-Merge store): one report per run
// of up to SketchRun non-zero counters of a row (zero counters add nothing
// and are not sent). A switch agent updates sk per packet, calls SendSketch
// when the epoch ends and then resets sk for the next one; the translator
// adds every counter into the collector's copy for that epoch, so the
// collector holds the sum of every reporter's sketch. It returns the number
// of reports sent. Flush the Reporter (or Close it) to send the last batch.
func (r *Reporter) SendSketch(store uint16, epoch uint32, sk *sketch.Sketch) (int, error) {
	var buf [SketchRun * 8]byte
	n := 0
	err := sk.Runs(SketchRun, func(run sketch.Run) error {
		if run.Row > 255 || run.Column > 1<<32-1 {
			return fmt.Errorf("reporter: sketch run at row %d column %d does not fit a report", run.Row, run.Column)
		}
		v := buf[:0]
		for _, c := range run.Counters {
			v = binary.BigEndian.AppendUint64(v, uint64(c))
		}
		rep := dta.Report{Opcode: dta.OpSketchExt, Store: store, Epoch: epoch, Row: uint8(run.Row), Column: uint32(run.Column), Value: v}
		if err := r.Send(&rep, false); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}
