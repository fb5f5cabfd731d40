// The mock vendors' knobs, validated once at start.
import { z } from 'zod';

export const mockVendorOptionsSchema = z.object({
  host: z.string().min(1).default('127.0.0.1'),
  /** 0 picks a free port (read it back from the running server). */
  port: z.number().int().min(0).max(65535).default(0),
  /** Delay before the first byte of every completion answer (a request can override it). */
  latencyMs: z.number().int().min(0).default(0),
  /** Stream pacing in output tokens per second; 0 sends each stream as fast as possible. */
  tokensPerSecond: z.number().min(0).default(0),
  /** Output length when neither max tokens nor a directive asks for fewer / more. */
  defaultOutputTokens: z.number().int().min(0).default(16),
  /** Share (0..1) of completions answered with a server error, spread evenly. */
  faultRate: z.number().min(0).max(1).default(0),
  /** Largest accepted request body; bigger ones get 413. */
  maxBodyBytes: z
    .number()
    .int()
    .min(1)
    .default(32 * 1024 * 1024),
});

export type MockVendorOptions = z.input<typeof mockVendorOptionsSchema>;
export type ResolvedMockVendorOptions = Readonly<z.output<typeof mockVendorOptionsSchema>>;
