import { describe, expect, it } from 'vitest';
import { ShutdownCut } from './shutdown-cut.js';

describe('ShutdownCut', () => {
  it('calls, at the cut, exactly the listeners still watching, each once', () => {
    const cut = new ShutdownCut();
    const heard: string[] = [];
    const stops = ['a', 'b', 'c', 'd', 'e'].map((name) => cut.onCut(() => heard.push(name)));
    stops[0]!(); // the oldest
    stops[2]!(); // one in the middle
    stops[4]!(); // the newest
    stops[2]!(); // twice: nothing more
    expect(cut.cut).toBe(false);
    cut.cutAll();
    expect(cut.cut).toBe(true);
    expect(heard.sort()).toEqual(['b', 'd']);
    cut.cutAll();
    stops[1]!(); // after the cut: nothing
    expect(heard.sort()).toEqual(['b', 'd']);
  });

  it('calls a listener at once once the cut came, and keeps nothing of it', () => {
    const cut = new ShutdownCut();
    cut.cutAll();
    let heard = 0;
    const stop = cut.onCut(() => (heard += 1));
    expect(heard).toBe(1);
    stop();
    cut.cutAll();
    expect(heard).toBe(1);
  });

  it('can be emptied and refilled any number of times', () => {
    const cut = new ShutdownCut();
    for (let round = 0; round < 3; round += 1) {
      const stops = [1, 2, 3].map(() => cut.onCut(() => undefined));
      for (const stop of stops.reverse()) stop();
    }
    const heard: number[] = [];
    cut.onCut(() => heard.push(1));
    cut.onCut(() => heard.push(2));
    cut.cutAll();
    expect(heard.sort()).toEqual([1, 2]);
  });
});
