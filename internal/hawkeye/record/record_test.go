package record

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

var tuple = Tuple{SrcIP: 0x0a000001, DstIP: 0x0a000002, SrcPort: 49152, DstPort: 4791, Proto: 17}

func TestRecordsRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name   string
		size   int
		encode func([]byte) []byte
		decode func([]byte) (any, error)
		want   any
	}{
		{"flow", FlowSize,
			(&Flow{Poll: 7, Switch: 19, Epoch: 0x3ff, Port: 3, Tuple: tuple, Pkts: 1e6, Paused: 5, QDepth: 1e9, Queued: 65535}).AppendTo,
			func(b []byte) (any, error) { var r Flow; err := r.Decode(b); return r, err },
			Flow{Poll: 7, Switch: 19, Epoch: 0x3ff, Port: 3, Tuple: tuple, Pkts: 1e6, Paused: 5, QDepth: 1e9, Queued: 65535}},
		{"port", PortSize,
			(&Port{Poll: 7, Switch: 4, Epoch: 2, Port: 1, PeerKind: PeerHost, Peer: 28, PeerPort: 0, Flags: FlagPausedNow, Pkts: 9, Paused: 8, QDepth: 70, PauseRx: 3, PauseTx: 2}).AppendTo,
			func(b []byte) (any, error) { var r Port; err := r.Decode(b); return r, err },
			Port{Poll: 7, Switch: 4, Epoch: 2, Port: 1, PeerKind: PeerHost, Peer: 28, PeerPort: 0, Flags: FlagPausedNow, Pkts: 9, Paused: 8, QDepth: 70, PauseRx: 3, PauseTx: 2}},
		{"manifest", ManifestSize,
			(&Manifest{Poll: 7, Switch: 4, Switches: 5, Role: RoleVictimPath | RolePFC, Strategy: 1, Flows: 60, Ports: 20, Meters: 40, At: 1_234_567, Victim: tuple}).AppendTo,
			func(b []byte) (any, error) { var r Manifest; err := r.Decode(b); return r, err },
			Manifest{Poll: 7, Switch: 4, Switches: 5, Role: RoleVictimPath | RolePFC, Strategy: 1, Flows: 60, Ports: 20, Meters: 40, At: 1_234_567, Victim: tuple}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.encode([]byte{0xee})
			if len(b) != 1+c.size || b[0] != 0xee {
				t.Fatalf("AppendTo wrote %d bytes after the prefix, want %d", len(b)-1, c.size)
			}
			got, err := c.decode(b[1:])
			if err != nil || got != c.want {
				t.Errorf("Decode = %+v, %v; want %+v", got, err, c.want)
			}
			if _, err := c.decode(b[1:c.size]); !errors.Is(err, ErrTruncated) {
				t.Errorf("Decode of %d bytes: %v, want ErrTruncated", c.size-1, err)
			}
		})
	}
}

func TestFlowRecordLayoutIsBigEndianAtTheDocumentedOffsets(t *testing.T) {
	r := Flow{Poll: 0x01020304, Switch: 0x0506, Epoch: 0x0708, Port: 9, Tuple: tuple, Pkts: 0x0a0b0c0d, Paused: 0x0e0f1011, QDepth: 0x12131415, Queued: 0x1617}
	got := hex.EncodeToString(r.AppendTo(nil))
	want := "01020304" + "0506" + "0708" + "09" + "11" + "0a000001" + "0a000002" + "c000" + "12b7" + "0a0b0c0d" + "0e0f1011" + "12131415" + "1617"
	if got != want {
		t.Errorf("flow record\n got %s\nwant %s", got, want)
	}
}

func TestMeterKeysNamePollSwitchEpochAndPorts(t *testing.T) {
	m := Meter{Poll: 1, Switch: 2, Epoch: 3, In: 4, Out: 5, Bytes: 1 << 40}
	if got, want := hex.EncodeToString(m.Key()), "00000001"+"0002"+"0003"+"04"+"05"; got != want {
		t.Errorf("key %s, want %s", got, want)
	}
	v, err := MeterValue(m.Value())
	if err != nil || v != 1<<40 {
		t.Errorf("value %d, %v; want 2^40", v, err)
	}
	if !bytes.Equal(MeterKey(1, 2, 3, 4, 5), m.Key()) {
		t.Errorf("MeterKey and Meter.Key differ")
	}
}

func TestTheConfigurationDeclaresEveryStore(t *testing.T) {
	y := ConfigYAML()
	for _, s := range []string{FlowStore, PortStore, MeterStore, PollStore, "entry_size: 36", "entry_size: 32", "entry_size: 44", "value_size: 8"} {
		if !strings.Contains(y, s) {
			t.Errorf("configuration lacks %q", s)
		}
	}
}

func FuzzDecodeNeverPanics(f *testing.F) {
	f.Add(make([]byte, ManifestSize))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		var fl Flow
		var p Port
		var m Manifest
		if fl.Decode(b) == nil && !bytes.Equal(fl.AppendTo(nil), b[:FlowSize]) {
			t.Errorf("flow record does not round trip")
		}
		if p.Decode(b) == nil && !bytes.Equal(p.AppendTo(nil), b[:PortSize]) {
			t.Errorf("port record does not round trip")
		}
		_ = m.Decode(b)
		_, _ = MeterValue(b)
	})
}
