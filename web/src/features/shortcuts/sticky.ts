/** How far below the bottom of the viewport the in-page button may sit before a sticky copy takes over. */
export const STICKY_THRESHOLD_PX = 100;

/**
 * Whether the 'Save Favorites' button should stick to the bottom of the screen: true when the top
 * of its in-page position is more than STICKY_THRESHOLD_PX below the viewport.
 */
export function shouldStickSaveButton(buttonTop: number, viewportHeight: number): boolean {
  return buttonTop > viewportHeight + STICKY_THRESHOLD_PX;
}
