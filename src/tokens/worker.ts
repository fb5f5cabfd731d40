// Piscina worker: counts tokens off the event loop.
import { countInputTokens, countOutputTokens } from './count.js';

export function countInput(texts: readonly string[]): number {
  return countInputTokens(texts);
}

export function countOutput(text: string): number {
  return countOutputTokens(text);
}
