// Built against the installed package by the "package" test.
#include <zklock/mutex.hpp>
#include <zklock/session.hpp>

#include <boost/asio/io_context.hpp>

#include <iostream>

int main() {
  boost::asio::io_context ioc;
  zklock::session_options opts;
  opts.connect = "";  // invalid on purpose: no server needed
  zklock::session s(ioc.get_executor(), opts);
  zklock::error_code result;
  s.async_connect([&](zklock::error_code ec) { result = ec; });
  ioc.run();
  std::cout << result.message() << "\n";
  return result == zklock::errc::empty_connect_string ? 0 : 1;
}
