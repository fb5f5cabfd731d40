// The ceiling for any Node proxy: uWebSockets.js in, undici out, no logic at all. Reads the
// body, forwards it to UPSTREAM_URL (same path), streams the answer back with backpressure.
// Run: UPSTREAM_URL=http://127.0.0.1:9000 PORT=0 node dist/bench/passthrough.js
// (UPSTREAM_CONNECTIONS: the pool's size, 256 unless given; a stream holds one.)
import { STATUS_CODES } from 'node:http';
import { Pool } from 'undici';
import { listenOnLoopback, readBody, uws } from './uws-target.js';

const upstream = new URL(process.env.UPSTREAM_URL ?? 'http://127.0.0.1:9000');
const statusLine = (code: number): string => `${code} ${STATUS_CODES[code] ?? ''}`;
const pool = new Pool(upstream.origin, {
  connections: Number(process.env.UPSTREAM_CONNECTIONS ?? 256),
  pipelining: 1,
  keepAliveTimeout: 30_000,
});

const app = uws.App().any('/*', (res, req) => {
  const method = req.getMethod().toUpperCase();
  const path = req.getUrl();
  const headers: Record<string, string> = {};
  req.forEach((name, value) => {
    if (name === 'authorization' || name === 'content-type' || name === 'x-api-key')
      headers[name] = value;
  });
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  readBody(res, (body) => {
    void (async () => {
      try {
        const answer = await pool.request({
          method: method as 'POST',
          path,
          headers,
          body,
        });
        let headersSent = false;
        for await (const piece of answer.body) {
          if (aborted) return;
          let writable = true;
          res.cork(() => {
            if (!headersSent) {
              res.writeStatus(statusLine(answer.statusCode));
              const type = answer.headers['content-type'];
              if (typeof type === 'string') res.writeHeader('content-type', type);
              headersSent = true;
            }
            writable = res.write(piece as Buffer);
          });
          if (!writable) {
            await new Promise<void>((resolve) =>
              res.onWritable(() => {
                resolve();
                return true;
              }),
            );
          }
        }
        if (aborted) return;
        res.cork(() => {
          if (!headersSent) res.writeStatus(statusLine(answer.statusCode));
          res.end();
        });
      } catch {
        if (!aborted) res.cork(() => res.writeStatus('502 Bad Gateway').end());
      }
    })();
  });
});
listenOnLoopback(app, 'passthrough');
