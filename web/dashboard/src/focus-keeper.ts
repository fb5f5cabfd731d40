// Keyboard focus kept on the page when what had it goes away: a row's button whose row a write
// removed or re-drew (a revoked key, a deleted endpoint), after its confirmation gave focus back
// to it. The browser would drop focus to the document's start, and the next Tab would begin at
// the top of the page; here focus moves to the heading of the nearest part of the page still
// there (its section, form or card; else the page's heading), and Tab goes on from there.

/** The parts of the page a lost focus falls back to, nearest first. */
const PLACES = 'section, form, .card';

/** Watches `root` (the main area) until the returned function is called. */
export function keepFocusInPlace(root: HTMLElement): () => void {
  let last: { element: Element; places: Element[] } | null = null;
  const onFocusIn = (event: FocusEvent) => {
    // focus gone outside the main area (the navigation, the top bar): nothing to keep
    if (!(event.target instanceof Element) || !root.contains(event.target)) {
      last = null;
      return;
    }
    const places: Element[] = [];
    for (let at = event.target.parentElement; at && at !== root; at = at.parentElement) {
      if (at.matches(PLACES)) places.push(at);
    }
    last = { element: event.target, places };
  };
  const recover = (lost: { element: Element; places: Element[] }) => {
    // focus went elsewhere meanwhile (a dialog gave it back to its button): nothing was lost
    if (document.activeElement && document.activeElement !== document.body) return;
    const place = lost.places.find((candidate) => candidate.isConnected);
    const heading =
      place?.querySelector<HTMLElement>('h2, h3, h4') ?? root.querySelector<HTMLElement>('h1');
    if (!heading) return;
    if (!heading.hasAttribute('tabindex')) heading.setAttribute('tabindex', '-1');
    heading.focus();
  };
  const observer = new MutationObserver(() => {
    if (!last || last.element.isConnected) return;
    const lost = last;
    last = null;
    // after the page's own effects (preact runs them after the next paint): a closed dialog
    // gives focus back to its opener only after its elements are gone
    requestAnimationFrame(() => setTimeout(() => recover(lost)));
  });
  document.addEventListener('focusin', onFocusIn);
  observer.observe(root, { childList: true, subtree: true });
  return () => {
    document.removeEventListener('focusin', onFocusIn);
    observer.disconnect();
  };
}
