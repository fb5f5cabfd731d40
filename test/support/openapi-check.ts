// A small JSON Schema checker for the parts of /openapi.json that describe bodies: local $refs,
// allOf, oneOf (exactly one), anyOf, type, const, enum, required, properties and items. No
// OpenAPI validator is a dependency; this is enough to hold a real answer against its schema.

type Schema = Record<string, unknown>;

/** Follows `#/…` references inside the document. */
export function resolveRef(document: unknown, ref: string): Schema {
  if (!ref.startsWith('#/')) throw new Error(`not a local reference: ${ref}`);
  let node: unknown = document;
  for (const part of ref.slice(2).split('/')) {
    const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    node = (node as Record<string, unknown> | undefined)?.[key];
  }
  if (node === undefined || node === null) throw new Error(`unresolved reference: ${ref}`);
  return node as Schema;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Why `value` does not match `schema` (empty when it does), each problem with its path. */
export function schemaProblems(
  document: unknown,
  schema: Schema,
  value: unknown,
  where = '$',
): string[] {
  if (typeof schema.$ref === 'string')
    return schemaProblems(document, resolveRef(document, schema.$ref), value, where);
  const problems: string[] = [];
  for (const part of (schema.allOf as Schema[] | undefined) ?? [])
    problems.push(...schemaProblems(document, part, value, where));
  if (schema.oneOf) {
    const matching = (schema.oneOf as Schema[]).filter(
      (part) => schemaProblems(document, part, value, where).length === 0,
    ).length;
    if (matching !== 1) problems.push(`${where}: matches ${matching} of oneOf, not exactly 1`);
  }
  if (schema.anyOf) {
    const any = (schema.anyOf as Schema[]).some(
      (part) => schemaProblems(document, part, value, where).length === 0,
    );
    if (!any) problems.push(`${where}: matches none of anyOf`);
  }
  if (schema.type !== undefined) {
    const types = [schema.type].flat() as string[];
    const actual = typeOf(value);
    if (!types.includes(actual) && !(actual === 'integer' && types.includes('number')))
      problems.push(`${where}: ${actual}, not ${types.join('|')}`);
  }
  if ('const' in schema && value !== schema.const)
    problems.push(`${where}: ${JSON.stringify(value)}, not ${JSON.stringify(schema.const)}`);
  if (schema.enum && !(schema.enum as unknown[]).includes(value))
    problems.push(`${where}: ${JSON.stringify(value)} is not one of the enum`);
  if (typeOf(value) === 'object') {
    const object = value as Record<string, unknown>;
    for (const name of (schema.required as string[] | undefined) ?? [])
      if (!(name in object)) problems.push(`${where}.${name}: required, missing`);
    for (const [name, part] of Object.entries((schema.properties as Record<string, Schema>) ?? {}))
      if (name in object)
        problems.push(...schemaProblems(document, part, object[name], `${where}.${name}`));
  }
  if (Array.isArray(value) && schema.items)
    value.forEach((item, index) =>
      problems.push(
        ...schemaProblems(document, schema.items as Schema, item, `${where}[${index}]`),
      ),
    );
  return problems;
}

/** The body schema a documented operation gives a status, for a media type (JSON by default). */
export function responseSchema(
  document: unknown,
  path: string,
  method: string,
  status: number,
  mediaType = 'application/json',
): Schema {
  const paths = (document as { paths: Record<string, Record<string, { responses: Schema }>> })
    .paths;
  const response = paths[path]?.[method]?.responses[String(status)] as
    { content?: Record<string, { schema: Schema }> } | undefined;
  const schema = response?.content?.[mediaType]?.schema;
  if (!schema) throw new Error(`no ${mediaType} schema for ${method} ${path} ${status}`);
  return schema;
}
