/**
 * Leaving the app for the checkout is a full page load. It goes through this object so tests can
 * watch it: jsdom cannot navigate, and its `window.location` cannot be replaced.
 */
export const browserLocation = {
  assign: (url: string) => window.location.assign(url),
};
