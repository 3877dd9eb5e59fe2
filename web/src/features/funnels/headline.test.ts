import { chatHeadline, helpHeadline, titleCase } from './headline';

describe('titleCase', () => {
  it('capitalises each word and lowers the rest', () => {
    expect(titleCase('yahoo  MAIL')).toBe('Yahoo Mail');
    expect(titleCase(' email ')).toBe('Email');
  });

  it('gives nothing for a blank keyword', () => {
    expect(titleCase('   ')).toBe('');
  });
});

describe('chatHeadline', () => {
  it('names the keyword for both chat funnels', () => {
    expect(chatHeadline('chat', 'yahoo mail')).toBe('Need Yahoo Mail Assistance? Get Instant Expert Assistance Now');
    expect(chatHeadline('refundable', 'printer')).toBe('Need Printer Assistance? Get Instant Expert Assistance Now');
  });

  it('has a default per funnel', () => {
    expect(chatHeadline('chat')).toBe('Need Help? Get Instant Expert Assistance Now!');
    expect(chatHeadline('refundable', null)).toBe('Need Help? Get Instant Expert Help Now!');
    expect(chatHeadline('chat', '  ')).toBe('Need Help? Get Instant Expert Assistance Now!');
  });
});

describe('helpHeadline', () => {
  it('names the keyword, or asks the default question', () => {
    expect(helpHeadline('gmail login')).toBe('Need Gmail Login Help? Get Instant Expert Help Now!');
    expect(helpHeadline()).toBe('Need Instant Online Help?');
    expect(helpHeadline('')).toBe('Need Instant Online Help?');
  });
});
