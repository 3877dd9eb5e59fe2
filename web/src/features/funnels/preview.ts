// The funnel page as the operator's preview of a draft flow (issue 47): /chat-help?preview=<id>
// runs the draft in the real funnel actor, for a visitor the server counts nowhere. The page
// sends no view event, keeps no campaign, and never leaves for a checkout.

export const PREVIEW_BANNER = 'Preview of a draft. This conversation is not counted.';
export const PREVIEW_CHECKOUT =
  'This is a preview: a visitor would go to the secure checkout now. Nothing is charged.';

/** The preview's id in a query (`?preview=<id>`), or null when the page is no preview. */
export function previewId(search: string | URLSearchParams): string | null {
  const query = typeof search === 'string' ? new URLSearchParams(search) : search;
  const id = query.get('preview')?.trim();
  return id ? id : null;
}
