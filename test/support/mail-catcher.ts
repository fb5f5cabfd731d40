// A real SMTP server for the tests (the `smtp-server` package, on 127.0.0.1): it takes what
// the gateway sends over SMTP, with the credentials of SMTP_URL, and keeps each message so a
// test can read it, find its link and follow it, as the person it was sent to would.
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { eventually } from './services.js';

export interface CaughtMail {
  readonly from: string;
  readonly to: readonly string[];
  readonly subject: string;
  /** The text part, transfer encoding undone. */
  readonly text: string;
  /** The message as it came over the wire. */
  readonly raw: string;
}

export interface MailCatcher {
  /** The SMTP_URL (with its user and password) that reaches this server. */
  readonly url: string;
  readonly mails: CaughtMail[];
  /** Every message to `to` so far. */
  to(to: string): CaughtMail[];
  /** Waits for the `count`-th message to `to` (1: the first) and returns it. */
  nth(to: string, count: number, timeoutMs?: number): Promise<CaughtMail>;
  /** Refuses every message from now on with an SMTP 550 (until set back to false). */
  refuse: boolean;
  close(): Promise<void>;
}

const USER = 'gw-mailer';
const PASSWORD = 'smtp-test-password-Q7';

/** Undoes quoted-printable (RFC 2045 6.7): soft line breaks and =XX escapes. */
function decodeQuotedPrintable(text: string): string {
  const bytes = text
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/gi, (_match, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return Buffer.from(bytes, 'latin1').toString('utf8');
}

function parse(raw: string, from: string, to: string[]): CaughtMail {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  let body = raw.slice(split + 4);
  const header = (name: string) =>
    new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(head)?.[1]?.trim() ?? '';
  const encoding = header('Content-Transfer-Encoding').toLowerCase();
  if (encoding === 'quoted-printable') body = decodeQuotedPrintable(body);
  if (encoding === 'base64') body = Buffer.from(body.replace(/\s+/g, ''), 'base64').toString();
  return { from, to, subject: header('Subject'), text: body.replace(/\r\n/g, '\n'), raw };
}

/** `port`: listen there (a server that was down coming up), else on any free port. */
export async function startMailCatcher(
  options: { readonly port?: number } = {},
): Promise<MailCatcher> {
  const mails: CaughtMail[] = [];
  const catcher = {
    refuse: false,
  } as { refuse: boolean };
  const server = new SMTPServer({
    // Plain SMTP on loopback: no STARTTLS offered (the test has no certificate to trust), and
    // the AUTH the gateway sends over it accepted.
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authOptional: false,
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === USER && auth.password === PASSWORD) callback(null, { user: USER });
      else callback(new Error('invalid username or password'));
    },
    onRcptTo(_address, _session, callback) {
      if (catcher.refuse) {
        const error = new Error('mailbox unavailable') as Error & { responseCode: number };
        error.responseCode = 550;
        callback(error);
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        const to = session.envelope.rcptTo.map((address) => address.address);
        mails.push(parse(Buffer.concat(chunks).toString('utf8'), from, to));
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  const to = (address: string) => mails.filter((mail) => mail.to.includes(address));
  return Object.assign(catcher, {
    url: mailCatcherUrl(port),
    mails,
    to,
    nth: (address: string, count: number, timeoutMs = 10_000) =>
      eventually(() => Promise.resolve(to(address)[count - 1]), timeoutMs),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

/** The token of the first link in `text` whose fragment names `name` (`…#name=<token>`). */
export function linkToken(text: string, name: string): { link: string; token: string } {
  const match = new RegExp(`(https?://\\S+#${name}=([0-9A-Za-z_]+))`).exec(text);
  if (!match) throw new Error(`no #${name}= link in:\n${text}`);
  return { link: match[1]!, token: match[2]! };
}

export const SMTP_PASSWORD = PASSWORD;

/** The SMTP_URL of a catcher on `port`, before it runs (a server that is down, then up). */
export function mailCatcherUrl(port: number): string {
  return `smtp://${USER}:${PASSWORD}@127.0.0.1:${port}`;
}

export interface SilentSmtpServer {
  /** Resolves once a client (a gateway's sender) has connected. */
  readonly connected: Promise<void>;
  /** Closes it and every connection it holds (its port free again). */
  close(): Promise<void>;
}

/** An SMTP server that hangs: it takes connections on `port` and never says a word. */
export async function startSilentSmtp(port: number): Promise<SilentSmtpServer> {
  const sockets = new Set<Socket>();
  let onConnected: () => void = () => undefined;
  const connected = new Promise<void>((resolve) => (onConnected = resolve));
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    onConnected();
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    connected,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
