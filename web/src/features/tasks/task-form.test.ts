import { ApiError } from '../../lib/api';
import {
  GENERIC_FAILURE,
  ITEMS_REQUIRED,
  NAME_REQUIRED,
  checkItem,
  checkNewTask,
  failureText,
  rowsAfterTyping,
} from './task-form';

describe('rowsAfterTyping', () => {
  it('adds an empty row when the last row gets text', () => {
    expect(rowsAfterTyping([''], 0, 'B')).toEqual(['B', '']);
    expect(rowsAfterTyping(['Buy milk', ''], 1, 'C')).toEqual(['Buy milk', 'C', '']);
  });

  it('changes an earlier row in place', () => {
    expect(rowsAfterTyping(['Buy milk', 'Call', ''], 0, 'Buy bread')).toEqual(['Buy bread', 'Call', '']);
    expect(rowsAfterTyping(['Buy milk', 'Call', ''], 1, '')).toEqual(['Buy milk', '', '']);
  });

  it('adds no row for spaces alone', () => {
    expect(rowsAfterTyping([''], 0, '  ')).toEqual(['  ']);
  });
});

describe('checkNewTask', () => {
  it('needs a name that is not blank', () => {
    expect(checkNewTask('   ', ['Buy milk'])).toEqual({ ok: false, field: 'name', message: NAME_REQUIRED });
  });

  it('needs one item that is not blank', () => {
    expect(checkNewTask('Shopping', ['', '  '])).toEqual({ ok: false, field: 'items', message: ITEMS_REQUIRED });
  });

  it('trims the name and items and drops blank rows', () => {
    expect(checkNewTask('  Shopping ', [' Buy milk', '', ' ', 'Bread ', ''])).toEqual({
      ok: true,
      name: 'Shopping',
      items: ['Buy milk', 'Bread'],
    });
  });
});

describe('checkItem', () => {
  it('refuses a blank item and trims the rest', () => {
    expect(checkItem(' \t ')).toBeNull();
    expect(checkItem('  Eggs ')).toBe('Eggs');
  });
});

describe('failureText', () => {
  it("shows the server's own text", () => {
    expect(failureText(new ApiError(409, 'too_many_items', 'A task can hold up to 100 items.'))).toBe(
      'A task can hold up to 100 items.',
    );
  });

  it('replaces texts not meant for people', () => {
    expect(failureText(new ApiError(0, 'timeout', 'Request timeout'))).toBe(GENERIC_FAILURE);
    expect(failureText(new ApiError(502, 'http_error', 'Request failed with status 502'))).toBe(GENERIC_FAILURE);
    expect(failureText(new TypeError('boom'))).toBe(GENERIC_FAILURE);
  });
});
