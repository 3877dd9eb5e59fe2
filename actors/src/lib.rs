//! The conversation actors and their pure rules, free of HTTP and database code.
