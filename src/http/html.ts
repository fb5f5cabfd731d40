// Server-rendered HTML pages (the OAuth consent page, error pages a browser opens): one
// page shell with its own stylesheet inline, allowed by its hash, and a Content-Security-
// Policy that allows nothing else — no framing, forms only to the places the page names, and
// no script but the inline ones a page names, each allowed by its hash (the consent page's
// few lines of progressive enhancement: decision 425; the page works without them). Every
// text put into a page goes through escapeHtml.
import { createHash } from 'node:crypto';

const PAGE_STYLE = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0; min-height: 100vh; display: grid; place-items: center; background: #f4f5f7; color: #1c1e21; }
@media (prefers-color-scheme: dark) { body { background: #16181c; color: #e4e6eb; } main { background: #22252a; } }
main { max-width: 30rem; margin: 2rem; padding: 2rem; border-radius: 12px; background: #fff; box-shadow: 0 1px 4px rgba(0,0,0,.15); }
h1 { font-size: 1.35rem; margin: 0 0 1rem; }
p { line-height: 1.5; }
.brand { font-weight: 700; letter-spacing: .05em; color: #5b6ee1; margin: 0 0 .5rem; }
.muted { opacity: .75; font-size: .9rem; }
code { word-break: break-all; }
label { display: block; margin: 1rem 0 .25rem; font-weight: 600; }
select, input { width: 100%; padding: .5rem; font-size: 1rem; box-sizing: border-box; }
.problem { color: #c62828; font-weight: 600; }
.actions { display: flex; gap: .75rem; margin-top: 1.5rem; }
button { flex: 1; padding: .65rem 1rem; font-size: 1rem; border-radius: 8px; border: 1px solid #8a8f98; cursor: pointer; background: transparent; color: inherit; }
button.primary { background: #5b6ee1; border-color: #5b6ee1; color: #fff; }
`;

/** The CSP source that allows exactly this inline text (a `<style>`'s or a `<script>`'s). */
const hashSource = (text: string): string =>
  `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

const STYLE_HASH = hashSource(PAGE_STYLE);

/** Escapes text for an HTML element or a double-quoted attribute. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/**
 * The policy of a server-rendered page: its inline stylesheet only, and the inline `scripts`
 * given (their exact text, allowed by hash; none: no script at all); forms may be sent to
 * the gateway itself and to `formTargets` (CSP source expressions: browsers also check the
 * redirect a form's answer makes against form-action).
 */
export function pageSecurityPolicy(
  formTargets: readonly string[] = [],
  scripts: readonly string[] = [],
): string {
  return [
    "default-src 'none'",
    `style-src ${STYLE_HASH}`,
    ...(scripts.length === 0 ? [] : [`script-src ${scripts.map(hashSource).join(' ')}`]),
    "base-uri 'none'",
    `form-action ${["'self'", ...formTargets].join(' ')}`,
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Headers of a server-rendered page (never cached: pages carry a session's CSRF token). */
export function pageHeaders(
  formTargets: readonly string[] = [],
  scripts: readonly string[] = [],
): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': pageSecurityPolicy(formTargets, scripts),
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    // same-origin, not no-referrer: under no-referrer browsers send `Origin: null` with the
    // page's form, which the Origin check refuses. Other origins get no Referer either way.
    'referrer-policy': 'same-origin',
  };
}

/** A whole page: `title` is text (escaped here), `bodyHtml` is markup the caller escaped. */
export function renderPage(title: string, bodyHtml: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · gw</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
<main>
<p class="brand">gw</p>
${bodyHtml}
</main>
</body>
</html>
`;
}

/** Does the client prefer a page (a browser navigating) to JSON? */
export function acceptsHtml(headers: Readonly<Record<string, string>>): boolean {
  const accept = headers.accept ?? '';
  return /(^|,)\s*text\/html\s*(;|,|$)/i.test(accept);
}
