// Embedding pxl: define a function in pxl source, call it on host data, and
// handle a pxl error as a C++ exception carrying the diagnostic.
#include <iostream>
#include <vector>

#include <pxl/pxl.hpp>

int main() {
  try {
    pxl::Runtime rt({.num_devices = 2});
    rt.run_string("def scale(x, a):\n"
                  "    return x * a + 1\n",
                  "model.pxl");

    std::vector<float> host = {1.0f, 2.0f, 3.0f, 4.0f};
    pxl::Array x = pxl::from_host(host, {2, 2});
    std::vector<pxl::Array> out = rt.call("scale", {x, pxl::scalar(2.0f)});

    std::cout << "scale(x, 2) =";
    for (float v : pxl::to_vector<float>(out.at(0))) std::cout << " " << v;
    std::cout << "  shape " << pxl::shape_str(out.at(0).shape()) << "\n";

    // A mistake in pxl code surfaces as pxl::Error with the located diagnostic.
    try {
      rt.run_string("y = scale(2.0, undefined_factor)\n", "oops.pxl");
    } catch (const pxl::Error& e) {
      std::cout << "caught pxl::Error:\n" << e.render();
    }
    // So does a wrong call from C++.
    try {
      rt.call("no_such_function", {x});
    } catch (const pxl::Error& e) {
      std::cout << "caught pxl::Error: " << e.message() << "\n";
    }
    // A default-constructed Array holds no data: passing one is an error, not a crash.
    try {
      rt.call("scale", {pxl::Array(), x});
    } catch (const pxl::Error& e) {
      std::cout << "caught pxl::Error: " << e.message() << "\n";
    }
    // So is using a Runtime after moving it away.
    pxl::Runtime moved = std::move(rt);
    try {
      rt.run_string("print(1)\n");
    } catch (const pxl::Error& e) {
      std::cout << "caught pxl::Error: " << e.message() << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "embed_demo: " << e.what() << "\n";
    return 1;
  }
}
