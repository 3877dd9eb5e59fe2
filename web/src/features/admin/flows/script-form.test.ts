import type { Bounds, FlowScript } from './flows-api';
import { changesFrom, charCount, fieldLabels, formOf, numberFields, scriptOf } from './script-form';

const BOUNDS: Bounds = { textMaxChars: 600, typingMinMs: 500, typingMaxMs: 8000, autoCheckoutMinS: 5, autoCheckoutMaxS: 120 };

const SCRIPT: FlowScript = {
  greeting: 'Hi',
  followUp: 'F',
  troubleshooting: 'T',
  unclearFollowUp: 'U1',
  unclearTroubleshooting: 'U2',
  finalChat: 'FC',
  finalRefundable: 'FR',
  helpIntro: 'H',
  typingDelayMinMs: 1500,
  typingDelayMaxMs: 2500,
  autoCheckoutAfterS: 15,
};

describe('the draft form', () => {
  it('counts characters as the server does: an emoji is one', () => {
    expect(charCount('Hi 👋🏽')).toBe(5);
    expect(charCount('')).toBe(0);
  });

  it('reads the numbers back, and names each one that is no whole number', () => {
    const fields = numberFields(BOUNDS);
    expect(scriptOf(formOf(SCRIPT), fields)).toEqual({ script: SCRIPT, problems: [] });
    const form = { ...formOf(SCRIPT), typingDelayMaxMs: '2.5', autoCheckoutAfterS: '' };
    expect(scriptOf(form, fields)).toEqual({
      script: null,
      problems: [
        { field: 'typingDelayMaxMs', message: 'Enter a whole number of milliseconds, from 500 to 8000.' },
        { field: 'autoCheckoutAfterS', message: 'Enter a whole number of seconds, from 5 to 120.' },
      ],
    });
  });

  it('lists only the fields that differ from the published version, with their labels', () => {
    const labels = fieldLabels([{ key: 'greeting', label: 'Greeting' }], BOUNDS);
    const form = { ...formOf(SCRIPT), greeting: 'Hello', autoCheckoutAfterS: '20' };
    expect(changesFrom(SCRIPT, form, labels)).toEqual([
      { field: 'greeting', label: 'Greeting', before: 'Hi', after: 'Hello' },
      { field: 'autoCheckoutAfterS', label: 'Automatic checkout after (s)', before: '15', after: '20' },
    ]);
    expect(changesFrom(SCRIPT, formOf(SCRIPT), labels)).toEqual([]);
    // Nothing published: every field is new.
    expect(changesFrom(null, formOf(SCRIPT), labels)).toHaveLength(11);
  });
});
