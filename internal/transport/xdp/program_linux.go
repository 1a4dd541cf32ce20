package xdp

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Offsets in struct xdp_md, the XDP program's context.
const (
	xdpMDData       = 0
	xdpMDDataEnd    = 4
	xdpMDRxQueueIdx = 16
	xdpPass         = 2 // XDP_PASS
)

// native16 returns the value a 16-bit load of the big-endian bytes of v gives
// on this machine: what the program compares packet fields with.
func native16(v uint16) int32 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return int32(binary.NativeEndian.Uint16(b[:]))
}

// portKey is the key of the ports map for a UDP port: the port's wire bytes
// loaded as a native 16-bit value, widened to 32 bits.
func portKey(port uint16) uint32 { return uint32(native16(port)) }

// steeringProgram returns the XDP program: frames whose UDP destination port
// is a key of ports go to the socket at xsks[rx queue], everything else (and
// everything the program cannot parse) passes to the kernel.
//
// Registers: R6 context, R2 data, R3 data_end, R4 cursor (start of the
// header being parsed), R5 scratch, R7 bound being checked against R3.
func steeringProgram(ports, xsks *ebpf.Map) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, xdpMDData, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, xdpMDDataEnd, asm.Word),

		// Ethernet header.
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, ethHeaderLen),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 12, asm.Half),
		asm.JNE.Imm(asm.R5, native16(etherTypeVLAN), "l3"),
		// One VLAN tag.
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, ethHeaderLen+vlanTagLen),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 16, asm.Half),

		asm.JEq.Imm(asm.R5, native16(etherTypeIPv4), "ipv4").WithSymbol("l3"),
		asm.JEq.Imm(asm.R5, native16(etherTypeIPv6), "ipv6"),
		asm.Ja.Label("pass"),

		// IPv4: protocol UDP, header length from IHL (a malformed IHL under
		// 5 is read as 5, so that the frame still reaches the socket and is
		// counted there rather than vanishing in the kernel).
		asm.Mov.Reg(asm.R7, asm.R4).WithSymbol("ipv4"),
		asm.Add.Imm(asm.R7, ipv4HeaderLen),
		asm.JGT.Reg(asm.R7, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R4, 9, asm.Byte),
		asm.JNE.Imm(asm.R5, protoUDP, "pass"),
		asm.LoadMem(asm.R5, asm.R4, 0, asm.Byte),
		asm.And.Imm(asm.R5, 0x0f),
		asm.LSh.Imm(asm.R5, 2),
		asm.JGE.Imm(asm.R5, ipv4HeaderLen, "ihl"),
		asm.Mov.Imm(asm.R5, ipv4HeaderLen),
		asm.Add.Reg(asm.R4, asm.R5).WithSymbol("ihl"),
		asm.Ja.Label("udp"),

		// IPv6: next header UDP (extension headers pass to the kernel).
		asm.Mov.Reg(asm.R7, asm.R4).WithSymbol("ipv6"),
		asm.Add.Imm(asm.R7, ipv6HeaderLen),
		asm.JGT.Reg(asm.R7, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R4, 6, asm.Byte),
		asm.JNE.Imm(asm.R5, protoUDP, "pass"),
		asm.Add.Imm(asm.R4, ipv6HeaderLen),

		// UDP: look the destination port up.
		asm.Mov.Reg(asm.R7, asm.R4).WithSymbol("udp"),
		asm.Add.Imm(asm.R7, udpHeaderLen),
		asm.JGT.Reg(asm.R7, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R4, 2, asm.Half),
		asm.StoreMem(asm.RFP, -4, asm.R5, asm.Word),
		asm.LoadMapPtr(asm.R1, ports.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "pass"),

		// Redirect to the socket of this queue; without one, pass.
		asm.LoadMapPtr(asm.R1, xsks.FD()),
		asm.LoadMem(asm.R2, asm.R6, xdpMDRxQueueIdx, asm.Word),
		asm.Mov.Imm(asm.R3, xdpPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),

		asm.Mov.Imm(asm.R0, xdpPass).WithSymbol("pass"),
		asm.Return(),
	}
}

// objects are the program and its maps.
type objects struct {
	prog  *ebpf.Program
	ports *ebpf.Map
	xsks  *ebpf.Map
}

// loadObjects creates the maps, fills the ports map and loads the program.
func loadObjects(ports []uint16, queues int) (*objects, error) {
	o := &objects{}
	var err error
	o.ports, err = ebpf.NewMap(&ebpf.MapSpec{Name: "dta_ports", Type: ebpf.Hash, KeySize: 4, ValueSize: 1, MaxEntries: uint32(max(len(ports), 1))})
	if err != nil {
		return nil, fmt.Errorf("create the ports map: %w", err)
	}
	for _, p := range ports {
		if err := o.ports.Put(portKey(p), uint8(1)); err != nil {
			o.close()
			return nil, fmt.Errorf("add port %d to the ports map: %w", p, err)
		}
	}
	o.xsks, err = ebpf.NewMap(&ebpf.MapSpec{Name: "dta_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: uint32(queues)})
	if err != nil {
		o.close()
		return nil, fmt.Errorf("create the XSKMAP: %w", err)
	}
	o.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "dta_steer",
		Type:         ebpf.XDP,
		License:      "MIT",
		Instructions: steeringProgram(o.ports, o.xsks),
	})
	if err != nil {
		o.close()
		return nil, fmt.Errorf("load the XDP program: %w", err)
	}
	return o, nil
}

func (o *objects) close() {
	if o.prog != nil {
		o.prog.Close()
	}
	for _, m := range []*ebpf.Map{o.ports, o.xsks} {
		if m != nil {
			m.Close()
		}
	}
}
