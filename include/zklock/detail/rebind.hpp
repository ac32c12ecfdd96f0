// Asio's rebind trait and the converting constructor's rule, once for every public class that
// has them (as Asio's I/O objects: basic_socket<P, E>::rebind_executor<E1>::other is
// basic_socket<P, E1>, constructible from a basic_socket<P, E1>&& when E1 converts to E).
// asio::use_awaitable_t<>::as_default_on_t<T> names T's rebind; as_default_on(std::move(x))
// converts x with T's converting constructor.
#pragma once

#include <type_traits>

namespace zklock::detail {

/// `Object<Executor>::rebind_executor<OtherExecutor>` of a class template on an executor type:
/// `other` is Object<OtherExecutor>. A class says `template <class OtherExecutor> using
/// rebind_executor = detail::rebind_executor<basic_x, OtherExecutor>;`.
template <template <class> class Object, class OtherExecutor>
struct rebind_executor {
  using other = Object<OtherExecutor>;
};

/// The trait of a value that does not depend on an executor type (a guard, a watch): itself.
template <class Self>
struct rebind_to_self {
  using other = Self;
};

/// The converting constructor's rule: an object on `Executor` takes over one of the same class
/// on `OtherExecutor` when an `OtherExecutor` converts implicitly to an `Executor` (not a strand
/// from a plain executor: its constructor is explicit).
template <class OtherExecutor, class Executor>
concept converts_to_executor = std::is_convertible_v<const OtherExecutor&, Executor>;

}  // namespace zklock::detail
