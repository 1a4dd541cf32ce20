package telemetry

import (
	"fmt"

	"github.com/dta-go/dta/internal/hawkeye/record"
	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/wire/dta"
)

// Parts selects the record kinds a poll exports (bits).
type Parts uint8

// Record kinds.
const (
	PartFlows  Parts = 1
	PartPorts  Parts = 2
	PartMeters Parts = 4
	PartAll          = PartFlows | PartPorts | PartMeters
)

// Cost is what a poll's export amounted to.
type Cost struct {
	Switches int
	Flows    int
	Ports    int
	Meters   int
	// Bytes is the records' bytes (entries, meter keys and values,
	// manifests): the telemetry the analyzer processes.
	Bytes int
}

// CostOf returns what exporting the parts of c would send.
func CostOf(c *Collection, parts Parts) Cost {
	var k Cost
	k.Switches = len(c.Snapshots)
	for _, s := range c.Snapshots {
		if parts&PartFlows != 0 {
			k.Flows += len(s.Flows)
		}
		if parts&PartPorts != 0 {
			k.Ports += len(s.Ports)
		}
		if parts&PartMeters != 0 {
			k.Meters += len(s.Meters)
		}
	}
	k.Bytes = k.Flows*record.FlowSize + k.Ports*record.PortSize + k.Meters*(record.MeterKeySize+record.MeterValueSize) +
		k.Switches*record.ManifestSize
	return k
}

// Export sends the parts of collection c, as poll number poll, through r:
// per switch its flow and port records (Append), its meters (Key-Write),
// then its manifest (Append), and flushes r. It returns what it sent.
func Export(r *reporter.Reporter, poll uint32, c *Collection, parts Parts) (Cost, error) {
	var buf []byte
	send := func(rep dta.Report) error {
		if err := r.Send(&rep, false); err != nil {
			return fmt.Errorf("telemetry: export poll %d: %w", poll, err)
		}
		return nil
	}
	for _, s := range c.Snapshots {
		sw := uint16(s.Switch)
		m := record.Manifest{Poll: poll, Switch: sw, Switches: uint16(len(c.Snapshots)), Role: c.Roles[s.Switch],
			Strategy: uint8(c.Strategy), At: uint64(c.At), Victim: record.Tuple(c.Victim)}
		if parts&PartFlows != 0 {
			for i := range s.Flows {
				f := s.Flows[i]
				f.Poll = poll
				buf = f.AppendTo(buf[:0])
				if err := send(reporter.Append(record.List(sw), buf, record.FlowStoreID)); err != nil {
					return Cost{}, err
				}
				m.Flows++
			}
		}
		if parts&PartPorts != 0 {
			for i := range s.Ports {
				p := s.Ports[i]
				p.Poll = poll
				buf = p.AppendTo(buf[:0])
				if err := send(reporter.Append(record.List(sw), buf, record.PortStoreID)); err != nil {
					return Cost{}, err
				}
				m.Ports++
			}
		}
		if parts&PartMeters != 0 {
			for i := range s.Meters {
				me := s.Meters[i]
				me.Poll = poll
				if err := send(reporter.KeyWrite(dta.Key{Bytes: me.Key()}, me.Value(), record.MeterCopies, record.MeterStoreID)); err != nil {
					return Cost{}, err
				}
				m.Meters++
			}
		}
		buf = m.AppendTo(buf[:0])
		if err := send(reporter.Append(0, buf, record.PollStoreID)); err != nil {
			return Cost{}, err
		}
	}
	if err := r.Flush(); err != nil {
		return Cost{}, fmt.Errorf("telemetry: export poll %d: %w", poll, err)
	}
	return CostOf(c, parts), nil
}
