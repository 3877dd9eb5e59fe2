/**
 * Leaving the app for a checkout is a full page load. It goes through this object so tests can
 * watch it: jsdom cannot navigate, and its `window.location` cannot be replaced.
 */
export const browserLocation = {
  assign: (url: string) => window.location.assign(url),
};

/** The spec's silent fallback when a checkout cannot start or the browser does not leave. */
export const CHECKOUT_FALLBACK_URL = '/?success=demo';
