package decode_test

import (
	"testing"

	"github.com/dta-go/dta/internal/decode"
	"github.com/dta-go/dta/internal/decode/decodetest"
	"github.com/dta-go/dta/wire/roce"
)

func TestFramePicksWhatToDecodeByPort(t *testing.T) {
	report := []byte{1, 1, 0, 2, 0, 0, 0, 1, 0, 0, 0, 42}
	ack := roce.Packet{BTH: roce.BTH{Opcode: roce.OpACK, DestQP: 0x11}, AETH: roce.AETH{Syndrome: roce.ACKUnlimited}}
	tests := []struct {
		name  string
		dec   decode.Decoder
		frame []byte
		want  string // "dta", "ack", "roce" or "" (skipped)
	}{
		{"a report to port 40040", decode.Decoder{}, decodetest.UDPFrame("10.0.0.1:1", "10.0.0.2:40040", report, false), "dta"},
		{"a report to another --port", decode.Decoder{Port: 9000}, decodetest.UDPFrame("10.0.0.1:1", "10.0.0.2:9000", report, false), "dta"},
		{"40040 is not a report port when another is given", decode.Decoder{Port: 9000}, decodetest.UDPFrame("10.0.0.1:1", "10.0.0.2:40040", report, false), ""},
		{"RoCEv2 to port 4791", decode.Decoder{}, decodetest.RoCEFrame(t, "10.0.0.1:49152", "10.0.0.2:4791", ack), "roce"},
		{"RoCEv2 from port 4791", decode.Decoder{}, decodetest.RoCEFrame(t, "10.0.0.2:4791", "10.0.0.1:49152", ack), "roce"},
		{"RoCEv2 on another port", decode.Decoder{RoCEPort: 4792}, decodetest.RoCEFrame(t, "10.0.0.2:4792", "10.0.0.1:49152", ack), "roce"},
		{"anything to port 40044 is an ACK", decode.Decoder{}, decodetest.UDPFrame("10.0.0.2:40040", "10.0.0.1:40044", []byte{1, 2, 3}, false), "ack"},
		{"2 bytes from the report port are an ACK", decode.Decoder{}, decodetest.UDPFrame("10.0.0.2:40040", "10.0.0.1:5000", []byte{1, 0}, false), "ack"},
		{"3 bytes from the report port are not", decode.Decoder{}, decodetest.UDPFrame("10.0.0.2:40040", "10.0.0.1:5000", []byte{1, 0, 0}, false), ""},
		{"a report port wins over the RoCEv2 port", decode.Decoder{Port: 4791}, decodetest.RoCEFrame(t, "10.0.0.1:49152", "10.0.0.2:4791", ack), "dta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := tt.dec.Frame(7, decode.Frame{LinkType: decode.LinkEthernet, Data: tt.frame})
			got := ""
			switch {
			case !ok:
			case p.RoCE != nil:
				got = "roce"
			case p.DTA != nil && p.DTA.Type == "ack":
				got = "ack"
			case p.DTA != nil:
				got = "dta"
			}
			if got != tt.want {
				t.Errorf("decoded as %q, want %q: %+v", got, tt.want, p)
			}
			if ok && p.DTA != nil && p.DTA.Index != 7 || ok && p.RoCE != nil && p.RoCE.Index != 7 {
				t.Errorf("index lost: %+v", p)
			}
		})
	}
}
