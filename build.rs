fn main() {
    println!("cargo:rerun-if-changed=src/num.c");
    cc::Build::new().file("src/num.c").opt_level(2).compile("rlockd_num");
}
