// A TCP relay in front of a real server that can be cut and opened again on the same port:
// cut() drops every connection through it and refuses new ones (the server looks down to
// whoever goes through it, and only to them: the data stays); open() lets connections through
// again. Unlike the freezable relay (freezable-relay.ts), nothing is held back while cut.
import { connect, createServer, type Server, type Socket } from 'node:net';

export class CuttableRelay {
  private listening: Server | undefined;
  private readonly sockets = new Set<Socket>();

  /** `target`: the server's port on 127.0.0.1, read at each connection. */
  constructor(
    readonly port: number,
    private readonly target: () => number,
  ) {}

  async open(): Promise<void> {
    const listening = createServer((inbound) => {
      const outbound = connect(this.target(), '127.0.0.1');
      for (const socket of [inbound, outbound]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      inbound.pipe(outbound).pipe(inbound);
    });
    await new Promise<void>((resolve) => listening.listen(this.port, '127.0.0.1', resolve));
    this.listening = listening;
  }

  async cut(): Promise<void> {
    const listening = this.listening;
    this.listening = undefined;
    for (const socket of this.sockets) socket.destroy();
    if (listening) await new Promise((resolve) => listening.close(resolve));
  }
}
