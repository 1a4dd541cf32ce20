package nf

import (
	"context"
	"errors"
	"io"
	"sync"
)

// Serve runs n between two packet devices whose every Read returns one IP
// packet and every Write sends one (TUN devices): packets read from in are
// Outbound, translated ones are written to out, and the reverse. It
// returns when ctx is done (after closing both devices, which must unblock
// their reads) or a read fails; the error is nil after ctx is done. in and
// out may be the same device.
func Serve(ctx context.Context, n *NF, in, out io.ReadWriteCloser) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Go(func() { errs <- n.Run(ctx) })
	read := func(dev io.Reader, dir Direction) {
		buf := make([]byte, 65535)
		for {
			m, err := dev.Read(buf)
			if err != nil {
				if ctx.Err() != nil {
					err = nil
				}
				errs <- err
				cancel()
				return
			}
			n.Process(dir, buf[:m]) // dropped packets are counted
		}
	}
	wg.Go(func() { read(in, Outbound) })
	if out != in {
		wg.Go(func() { read(out, Inbound) })
	}
	<-ctx.Done()
	in.Close()
	if out != in {
		out.Close()
	}
	wg.Wait()
	close(errs)
	var first error
	for err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) && first == nil {
			first = err
		}
	}
	return first
}

// Sender returns a Config.Send writing Outbound packets to out and Inbound
// ones to in.
func Sender(in, out io.Writer) func(Direction, []byte) error {
	return func(dir Direction, b []byte) error {
		w := out
		if dir == Inbound {
			w = in
		}
		_, err := w.Write(b)
		return err
	}
}
