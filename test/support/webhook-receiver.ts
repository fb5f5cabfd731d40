// A webhook receiver for the tests: an HTTP server on 127.0.0.1 that verifies the signature
// of every message it gets with the `standardwebhooks` package (the reference implementation
// receivers use), records them, and answers as each test tells it (a status, a delay, a body).
// Each endpoint of a test is one path of the receiver, with its own secret(s) and behaviour.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { eventually } from './services.js';
import { baseEnv } from './env.js';

export interface ReceivedMessage {
  readonly path: string;
  readonly id: string;
  readonly timestamp: string;
  readonly signature: string;
  readonly body: string;
  /** The verified payload: {type, timestamp, data}. */
  readonly payload: { type: string; timestamp: string; data: Record<string, unknown> };
  /** Which of the path's secrets verified it (by position). */
  readonly verifiedWith: number[];
  readonly receivedAtMs: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** 1 for the first time this webhook-id arrived, 2 for its first retry, … */
  readonly attempt: number;
  /** The status the receiver answered. */
  readonly status: number;
}

export interface Answer {
  readonly status: number;
  readonly delayMs?: number;
  /** Answered once this settles (after `delayMs`, if any): an attempt kept in flight at will. */
  readonly heldUntil?: Promise<unknown>;
  readonly body?: string;
  readonly headers?: Record<string, string>;
}

export type Behaviour = (message: ReceivedMessage, attempt: number) => Answer;
/** A behaviour that looks elsewhere before it answers (the gateway's delivery log). */
export type AsyncBehaviour = (message: ReceivedMessage, attempt: number) => Promise<Answer>;

/** The environment every webhook test gateway runs with (the same in every file: any test
 * file's dispatcher may deliver another's messages while files run side by side). */
export function webhookEnv(prefix: string): Record<string, string> {
  return {
    ...baseEnv(prefix),
    WEBHOOK_DELIVERY_CONCURRENCY: '4',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1,1,1,1,1,1',
    WEBHOOK_POLL_INTERVAL_MS: '100',
    WEBHOOK_SWEEP_INTERVAL_MS: '200',
    WEBHOOK_TIMEOUT_MS: '3000',
    USAGE_FLUSH_INTERVAL_MS: '20',
  };
}

export class WebhookReceiver {
  readonly received: ReceivedMessage[] = [];
  /** Requests whose signature no secret of their path verified (must stay empty). */
  readonly unverified: Array<{ path: string; reason: string }> = [];
  private readonly secrets = new Map<string, string[]>();
  private readonly behaviours = new Map<string, Behaviour | AsyncBehaviour>();
  private readonly attemptsById = new Map<string, number>();
  private readonly inFlightByPath = new Map<string, number>();
  private readonly inFlightById = new Map<string, number>();
  /** The most requests one path had in flight at once. */
  readonly maxInFlightByPath = new Map<string, number>();
  /** Deliveries (path and message id) that were in flight twice at the same moment. */
  readonly overlappingIds = new Set<string>();
  private server: Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      void this.handle(request).then(
        (answer) => {
          response.writeHead(answer.status, {
            'content-type': 'text/plain',
            ...answer.headers,
          });
          response.end(answer.body ?? 'ok');
        },
        (error: unknown) => {
          response.writeHead(500);
          response.end(String(error));
        },
      );
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** The URL of a path, whose messages verify with `secrets` (more than one: a rotation). */
  endpoint(path: string, secrets: string[] = []): string {
    this.secrets.set(path, secrets);
    return `${this.url}${path}`;
  }

  setSecrets(path: string, secrets: string[]): void {
    this.secrets.set(path, secrets);
  }

  /** How the path answers: by default 200 at once. */
  behave(path: string, behaviour: Behaviour | AsyncBehaviour): void {
    this.behaviours.set(path, behaviour);
  }

  messages(path: string): ReceivedMessage[] {
    return this.received.filter((message) => message.path === path);
  }

  ofType(path: string, type: string): ReceivedMessage[] {
    return this.messages(path).filter((message) => message.payload.type === type);
  }

  /** Waits until the path got `count` messages of `type` (more may come later). */
  waitFor(path: string, type: string, count = 1, timeoutMs = 15_000): Promise<ReceivedMessage[]> {
    return eventually(async () => {
      const found = this.ofType(path, type);
      return found.length >= count ? found : undefined;
    }, timeoutMs);
  }

  private async handle(request: IncomingMessage): Promise<Answer> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const path = request.url ?? '/';
    const header = (name: string): string => {
      const value = request.headers[name];
      return typeof value === 'string' ? value : '';
    };
    const verifiedWith: number[] = [];
    let payload: ReceivedMessage['payload'] | undefined;
    (this.secrets.get(path) ?? []).forEach((secret, index) => {
      try {
        payload = new Webhook(secret).verify(body, {
          'webhook-id': header('webhook-id'),
          'webhook-timestamp': header('webhook-timestamp'),
          'webhook-signature': header('webhook-signature'),
        }) as ReceivedMessage['payload'];
        verifiedWith.push(index);
      } catch {
        // another secret may verify it
      }
    });
    if (!payload) {
      this.unverified.push({ path, reason: `no secret verified ${header('webhook-id')}` });
      return { status: 400, body: 'bad signature' };
    }
    const id = header('webhook-id');
    const attempt = (this.attemptsById.get(id) ?? 0) + 1;
    this.attemptsById.set(id, attempt);
    const arrived = {
      path,
      id,
      timestamp: header('webhook-timestamp'),
      signature: header('webhook-signature'),
      body,
      payload,
      verifiedWith,
      receivedAtMs: Date.now(),
      headers: request.headers,
      attempt,
    };
    const answering = (this.behaviours.get(path) ?? (() => ({ status: 200 })))(
      { ...arrived, status: 0 },
      attempt,
    );
    // A behaviour that answers at once is not made to wait a turn (the in-flight counts below).
    const answer: Answer = answering instanceof Promise ? await answering : answering;
    const message: ReceivedMessage = { ...arrived, status: answer.status };
    this.received.push(message);
    const pathCount = (this.inFlightByPath.get(path) ?? 0) + 1;
    this.inFlightByPath.set(path, pathCount);
    this.maxInFlightByPath.set(path, Math.max(this.maxInFlightByPath.get(path) ?? 0, pathCount));
    // One message goes to each endpoint with its one id: in flight twice means at one path.
    const delivery = `${path} ${message.id}`;
    const idCount = (this.inFlightById.get(delivery) ?? 0) + 1;
    this.inFlightById.set(delivery, idCount);
    if (idCount > 1) this.overlappingIds.add(delivery);
    try {
      if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
      await answer.heldUntil;
      return answer;
    } finally {
      this.inFlightByPath.set(path, (this.inFlightByPath.get(path) ?? 1) - 1);
      this.inFlightById.set(delivery, (this.inFlightById.get(delivery) ?? 1) - 1);
    }
  }
}
