// Loads uWebSockets.js and refuses its slow pure-JS fallback: benches must never run on it.
import { createRequire } from 'node:module';
import type * as Uws from 'uWebSockets.js';

export type UwsModule = typeof Uws;

export class UwsFallbackError extends Error {
  override readonly name = 'UwsFallbackError';
}

let loaded: UwsModule | undefined;

/** The native module; throws UwsFallbackError when only the JS shim could load. */
export function loadNativeUws(): UwsModule {
  if (loaded) return loaded;
  const require = createRequire(import.meta.url);
  const module = require('uWebSockets.js') as UwsModule;
  // The native addon exports SSLApp and getParts; the shim (dist/index.js) exports only App.
  if (typeof module.SSLApp !== 'function' || typeof module.getParts !== 'function') {
    throw new UwsFallbackError(
      'uWebSockets.js native binary failed to load (only the slow JS fallback is available); ' +
        `platform ${process.platform}-${process.arch}, ABI ${process.versions.modules}`,
    );
  }
  loaded = module;
  return module;
}
