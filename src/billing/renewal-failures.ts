// What the log says of hold renewals that fail (Redis out of reach): every running request and
// every spooled settle renews on its own timer, so a line per failure was a line per request
// per third of the lapse for as long as the outage lasted. One line when renewals start
// failing, one when they have succeeded again for a whole renewal round with none failing, with
// how many failed meanwhile (decision 580). A round without failures, not the first success:
// on a Redis Cluster with one master gone, renewals of the other masters' accounts succeed
// between the failures, and would log a recovery and a new failure each time.
import type { Logger } from '../log.js';

export class RenewalFailures {
  private failing:
    | { readonly sinceMs: number; lastFailureMs: number; lastSuccessMs: number; failed: number }
    | undefined;
  private recoveryCheck: NodeJS.Timeout | undefined;

  /** `roundMs`: how often each holder renews (a third of RESERVATION_TTL_MS). */
  constructor(
    private readonly logger: Logger | undefined,
    private readonly roundMs: number,
  ) {}

  failed(error: unknown, requestId: string): void {
    const now = Date.now();
    if (this.failing) {
      this.failing.failed += 1;
      this.failing.lastFailureMs = now;
      return;
    }
    this.failing = { sinceMs: now, lastFailureMs: now, lastSuccessMs: 0, failed: 1 };
    this.logger?.warn(
      { err: error, requestId },
      'hold renewals fail: holds lapse if Redis stays out of reach',
    );
  }

  succeeded(): void {
    if (!this.failing) return;
    this.failing.lastSuccessMs = Date.now();
    this.checkRecoveryLater();
  }

  /**
   * Once a round has passed since the last failure: recovered, unless one failed meanwhile;
   * then checked again a round after that one, if a renewal succeeded since (otherwise the
   * next success asks). One timer at most.
   */
  private checkRecoveryLater(): void {
    const failing = this.failing;
    if (!failing || this.recoveryCheck) return;
    this.recoveryCheck = setTimeout(
      () => {
        this.recoveryCheck = undefined;
        if (this.failing !== failing) return;
        if (Date.now() - failing.lastFailureMs >= this.roundMs) {
          this.failing = undefined;
          this.logger?.info(
            { failed: failing.failed, failingForMs: failing.lastFailureMs - failing.sinceMs },
            'hold renewals succeed again',
          );
        } else if (failing.lastSuccessMs >= failing.lastFailureMs) {
          this.checkRecoveryLater();
        }
      },
      Math.max(0, failing.lastFailureMs + this.roundMs - Date.now()),
    );
    this.recoveryCheck.unref();
  }
}
