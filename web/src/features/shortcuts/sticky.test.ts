import { shouldStickSaveButton, STICKY_THRESHOLD_PX } from './sticky';

describe('shouldStickSaveButton', () => {
  it('keeps the button in place while it is on screen', () => {
    expect(shouldStickSaveButton(300, 800)).toBe(false);
  });

  it('keeps the button in place when it is just below the screen, up to 100 px', () => {
    expect(shouldStickSaveButton(850, 800)).toBe(false);
    expect(shouldStickSaveButton(800 + STICKY_THRESHOLD_PX, 800)).toBe(false);
  });

  it('sticks once the button is more than 100 px below the screen', () => {
    expect(shouldStickSaveButton(800 + STICKY_THRESHOLD_PX + 1, 800)).toBe(true);
    expect(shouldStickSaveButton(2400, 667)).toBe(true);
  });

  it('does not stick when the button has been scrolled past (above the screen)', () => {
    expect(shouldStickSaveButton(-500, 800)).toBe(false);
  });
});
