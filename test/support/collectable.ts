// Whether an object is garbage: for tests that something long-lived (a stream's exchange, a
// pending request, undici's call) does not keep what it no longer needs.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** True once a full collection has taken the reference's target. */
export async function collected(ref: WeakRef<object>): Promise<boolean> {
  // A WeakRef made in this job holds its target until the job ends.
  await new Promise((resolve) => setTimeout(resolve, 0));
  collectGarbage();
  await new Promise((resolve) => setTimeout(resolve, 0));
  return ref.deref() === undefined;
}
