// A test's preload (`node --import` this file `dist/src/main.js`): the process's import of
// src/gateway.ts never finishes, so a test can signal a gateway process that is surely still
// loading its code. Writes "holding the gateway import" to stderr once that import has begun.
// The same file is the module hooks it registers (they run on a thread of their own).
import { writeSync } from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

if (isMainThread) {
  register(import.meta.url);
  // The held import keeps nothing alive: this does, so only a signal ends the process.
  setInterval(() => undefined, 1 << 30);
}

export async function resolve(specifier, context, nextResolve) {
  if (specifier === './gateway.js' && context.parentURL?.endsWith('/dist/src/main.js')) {
    writeSync(2, 'holding the gateway import\n');
    return new Promise(() => undefined);
  }
  return nextResolve(specifier, context);
}
