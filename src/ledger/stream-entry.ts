// A usage stream entry's flat fields (name, value, name, value, …) read by name. Records and
// notices both travel in the org's usage stream; each kind throws its own format error, so
// the writer can tell an entry it cannot read from one it does not know. `Name` is the kind's
// list of field names: a reader cannot read a name its kind does not list, and the list is
// what tells a writer an entry of a newer version (entry-format.ts).

export class StreamEntryFields<Name extends string = string> {
  private readonly values = new Map<string, string>();

  /**
   * `fail` makes the kind's error; `entry` names the kind in its messages; with
   * `emptyIsMissing`, a field present but empty is refused as if it were absent.
   */
  constructor(
    fields: readonly string[],
    private readonly fail: (message: string) => Error,
    private readonly entry: string,
    private readonly emptyIsMissing = false,
  ) {
    for (let index = 0; index + 1 < fields.length; index += 2) {
      this.values.set(fields[index]!, fields[index + 1]!);
    }
  }

  /** The field, or undefined when absent (for fields older versions did not write). */
  get(name: Name): string | undefined {
    return this.values.get(name);
  }

  set(name: string, value: string): void {
    this.values.set(name, value);
  }

  /** The field; throws when it is absent. */
  text(name: Name): string {
    const value = this.values.get(name);
    if (value === undefined || (this.emptyIsMissing && value === ''))
      throw this.fail(`${this.entry} entry lacks ${name}`);
    return value;
  }

  /** The field as a safe integer; throws when it is absent or not one. */
  integer(name: Name): number {
    const value = Number(this.text(name));
    if (!Number.isSafeInteger(value))
      throw this.fail(`${this.entry} entry ${name} is not an integer`);
    return value;
  }

  /** The field as a safe integer, or `absent` when older versions did not write it. */
  integerOr(name: Name, absent: number): number {
    return this.values.has(name) ? this.integer(name) : absent;
  }

  /** The field, with the empty string read as null; throws when it is absent. */
  optional(name: Name): string | null {
    const value = this.text(name);
    return value === '' ? null : value;
  }
}
