// A vendor stub for the e2e tests that need answers the built-in mock vendors do not give: a
// local HTTP server that reads each request's JSON body and lets the test answer it, and the
// answers such a stub writes.
import {
  createServer,
  type IncomingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { messagesMessage, messagesTextStream } from './messages-events.js';

export type StubAnswer = (
  body: Record<string, unknown>,
  response: ServerResponse,
  headers: IncomingHttpHeaders,
) => void;

/** A stub vendor: each request's body, once read and parsed as JSON, goes to `answer`. */
export function stubVendor(answer: StubAnswer): Server {
  return createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      answer(body, response, request.headers);
    });
  });
}

/** Starts `stub` on a free local port; resolves to its base URL. */
export async function listenLocally(stub: Server): Promise<string> {
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
}

/** Ends the stub's open connections and closes it. */
export async function closeStub(stub: Server): Promise<void> {
  stub.closeAllConnections();
  await new Promise((resolve) => stub.close(resolve));
}

/** Answers 200 with `value` as JSON. */
export function answerJson(response: ServerResponse, value: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(JSON.stringify(value));
}

/** Opens a 200 event stream; the caller writes the events and ends it. */
export function openEventStream(response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'text/event-stream' });
}

export interface MessagesTextAnswer {
  readonly id: string;
  readonly model: string;
  readonly text: string;
  /** The usage of the JSON answer. */
  readonly usage: Record<string, unknown>;
  /** The usage message_start carries, and the one message_delta carries, in a stream. */
  readonly startUsage: Record<string, unknown>;
  readonly finalUsage: Record<string, unknown>;
}

/**
 * Answers a messages request with one text block whose turn ended: a `message` object, or its
 * stream when the body asks for one.
 */
export function answerMessagesText(
  body: Record<string, unknown>,
  response: ServerResponse,
  answer: MessagesTextAnswer,
): void {
  const { id, model, text } = answer;
  if (body.stream !== true) {
    answerJson(
      response,
      messagesMessage({ id, model, text, stopReason: 'end_turn', usage: answer.usage }),
    );
    return;
  }
  openEventStream(response);
  const started = messagesMessage({ id, model, usage: answer.startUsage });
  response.end(messagesTextStream(started, text, answer.finalUsage));
}
